"""Property-based tests (hypothesis) of everything a request body or query string reaches first:
body decoding, quantities, selectors, the three patch formats and server-side apply.

Each property says "whatever the input, the answer is a value or a Status error, never another
exception, and it comes at once". One fixed budget for CI, registered here as the `phalanx`
profile and loaded by default:

- `max_examples` sized so the whole directory runs in under a minute on a 2-core machine;
- `derandomize=True`: the same examples on every run, so CI failures reproduce;
- `deadline`: the bounded-time assertion per example, generous enough for a loaded machine
  (each example takes microseconds to milliseconds; the defects these tests guard against took
  seconds to minutes).

`HYPOTHESIS_PROFILE=explore` runs many more, randomised examples when hunting for defects.
`--hypothesis-show-statistics` prints how many inputs each property tried.
"""

from __future__ import annotations

import os
from datetime import timedelta

from hypothesis import HealthCheck, settings

EXAMPLE_DEADLINE = timedelta(seconds=2)

settings.register_profile(
    "phalanx",
    max_examples=150,
    deadline=EXAMPLE_DEADLINE,
    derandomize=True,
    suppress_health_check=[HealthCheck.too_slow],
    print_blob=True,
)
settings.register_profile(
    "explore",
    max_examples=5000,
    deadline=EXAMPLE_DEADLINE,
    derandomize=False,
    suppress_health_check=[HealthCheck.too_slow],
    print_blob=True,
)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "phalanx"))
