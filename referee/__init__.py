"""All Fours (Trinidad rules) referee: pure rules engine, dealing, gRPC server and tools."""
