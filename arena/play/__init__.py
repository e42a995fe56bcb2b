"""Playing one game on a referee: the referee pool and the gRPC game runner."""
