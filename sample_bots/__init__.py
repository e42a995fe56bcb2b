"""Sample bots: ``random_bot.RandomBot``, ``heuristic.HeuristicBot`` and a Node.js bot in ``js/``."""
