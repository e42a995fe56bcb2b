"""What the arena writes and shows: result files, the leaderboard, terminal tables and progress, bot
failures and the live game files."""
