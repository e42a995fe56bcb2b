# Debian's chromium: the browser of the arena web tests (tests/test_arena_web_browser.py), driven by
# the Python playwright package through executable_path=/usr/bin/chromium (never `playwright install`).
need_pkgs chromium fonts-dejavu-core
