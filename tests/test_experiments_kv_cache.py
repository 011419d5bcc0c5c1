"""The key/value cache's measurement: times and memory from two fresh processes, merged."""

from __future__ import annotations

import json

import torch

from attnprimer.site.experiments import kv_cache
from attnprimer.site.experiments.kv_cache import DecodingPoint, measure_decoding_in_fresh_processes


def test_times_come_from_the_ordinary_allocator_and_memory_from_the_exact_one(monkeypatch):
    calls = []

    def fake_run_fresh(arguments, module):
        calls.append((list(arguments), module))
        exact = "--exact-allocator" in arguments
        # the same points, told apart: times 1 and 2 s, memory 10 or 20 bytes
        return [[True, 4, 2.0 if exact else 1.0, 20 if exact else 10, 200 if exact else 100],
                [False, 4, 4.0 if exact else 3.0, 0, 400 if exact else 300]]

    monkeypatch.setattr(kv_cache, "run_fresh", fake_run_fresh)
    points = measure_decoding_in_fresh_processes(8, [4], dim=16, heads=2, layers=1, repeats=1)
    assert points == [DecodingPoint(True, 4, 1.0, 20, 200), DecodingPoint(False, 4, 3.0, 0, 400)]
    assert [module for _, module in calls] == ["attnprimer.site.experiments.kv_cache"] * 2
    timed, held = (arguments for arguments, _ in calls)
    assert "--exact-allocator" not in timed and held == [*timed, "--exact-allocator"]
    assert timed[timed.index("--classes") + 1] == "8" and timed[-1] == "4"


def test_the_command_line_measures_in_this_process_with_json(capsys):
    # One decoding of four tokens by a tiny model: the points as JSON, the cache on and off.
    threads = torch.get_num_threads()  # the command line sets one thread: give them back
    try:
        assert kv_cache._main(["--json", "--classes", "8", "--dim", "16", "--heads", "2",
                               "--layers", "1", "--repeats", "1", "--lengths", "4"]) == 0
    finally:
        torch.set_num_threads(threads)
    points = [DecodingPoint(*point) for point in json.loads(capsys.readouterr().out)]
    assert [(point.cache, point.length) for point in points] == [(True, 4), (False, 4)]
    assert points[0].cache_bytes == 2 * (16 + 1 + 3) * 16 * 4  # prompt, separator, 3 tokens
    assert points[1].cache_bytes == 0 and all(point.seconds > 0 for point in points)
