"""The store's bucket: key order is brought up to date lazily, and must always equal a sort."""

import random

from phalanx.store.bucket import Bucket


def test_ordered_keys_match_a_sort_after_random_adds_removes_and_replaces():
    rng = random.Random(7)
    bucket = Bucket()
    for step in range(3000):
        key = (rng.choice("abc"), f"n{rng.randrange(200)}")
        if key in bucket:
            if rng.random() < 0.5:
                bucket.remove(key)
            else:
                bucket[key] = step
        else:
            bucket.add(key, step)
        if rng.random() < 0.1:
            assert bucket.ordered_keys() == sorted(bucket)
            assert bucket.ordered_values() == [bucket[k] for k in sorted(bucket)]
    assert bucket.ordered_keys() == sorted(bucket)


def test_remove_then_add_again_before_a_read_keeps_one_key():
    bucket = Bucket()
    bucket.add(("ns", "a"), 1)
    assert bucket.ordered_keys() == [("ns", "a")]
    bucket.remove(("ns", "a"))
    bucket.add(("ns", "a"), 2)
    bucket.add(("ns", "b"), 3)
    bucket.remove(("ns", "b"))
    bucket.add(("ns", "b"), 4)
    assert bucket.ordered_keys() == [("ns", "a"), ("ns", "b")]


def test_irange_and_bisect_as_sorteddict():
    bucket = Bucket()
    for ns in ("a", "b", "c"):
        for i in range(3):
            bucket.add((ns, f"x{i}"), None)
    assert list(bucket.irange(("b",), ("b\0",), inclusive=(True, False))) == [("b", "x0"), ("b", "x1"), ("b", "x2")]
    assert list(bucket.irange(("b", "x1"), None, inclusive=(False, False)))[:2] == [("b", "x2"), ("c", "x0")]
    assert bucket.bisect_left(("b",)) == 3 and bucket.bisect_right(("b", "x0")) == 4
