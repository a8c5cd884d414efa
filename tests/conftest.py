"""Settings for every test: the store checks that no shared object is changed in place
(store/base.py); clusters started by e2e tests inherit it through the environment."""

import os

os.environ.setdefault("PHALANX_STORE_CHECKS", "1")
