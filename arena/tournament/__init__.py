"""A tournament from config to stored results: the schedule, the store, the output lock, the game loop
and the league service that keeps a tournament growing."""
