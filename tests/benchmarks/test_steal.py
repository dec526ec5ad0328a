"""The share of a VM's CPU time its neighbours took during a benchmark, from /proc/stat."""

from __future__ import annotations

from benchmarks.steal import Steal, describe


def _stat(path, user, idle, steal):
    path.write_text(f"cpu  {user} 0 0 {idle} 0 0 0 {steal} 0 0\ncpu0 1 2 3 4 5 6 7 8 9 10\n")


def test_the_share_stolen_between_enter_and_exit(tmp_path):
    stat = tmp_path / "stat"
    _stat(stat, 100, 800, 100)
    with Steal(stat) as steal:
        _stat(stat, 400, 1400, 200)              # 1000 ticks more, 100 of them stolen
    assert steal.share == 0.1
    assert "10.0 %" in steal.sentence() and "noisy" in steal.sentence()


def test_a_quiet_run_says_so_and_an_unreadable_one_too(tmp_path):
    assert describe(0.001).endswith("(steal, /proc/stat).")
    with Steal(tmp_path / "missing") as steal:
        pass
    assert steal.share is None and "could not be read" in steal.sentence()


def test_this_machine_can_be_read():
    with Steal() as steal:
        sum(range(100_000))
    assert steal.share is None or 0.0 <= steal.share <= 1.0
