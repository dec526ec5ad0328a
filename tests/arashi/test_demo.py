"""``python -m arashi.demo`` (what ``make arashi`` runs before serving): two users with the
printed passwords, a few hundred generated messages in several folders, kept when run again."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from arashi.demo import FOLDERS, USERS

from tests.helpers.arashi_env import new_store

ROOT = Path(__file__).resolve().parents[2]


def demo(data: Path) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "arashi.demo", str(data)],
                          capture_output=True, text=True, timeout=120)


def test_demo_users_and_mail(tmp_path):
    data = tmp_path / "demo"
    done = demo(data)
    assert done.returncode == 0, done.stderr
    assert "demo made" in done.stdout
    for name, password in USERS.items():
        assert f"user {name}" in done.stdout and password in done.stdout
    store = new_store(data)
    try:
        total = 0
        for name, password in USERS.items():
            user = store.authenticate(name, password)
            assert user is not None
            counts = {f.name: f.count for f in store.folders(user)}
            assert counts == FOLDERS[name]
            total += sum(counts.values())
        assert 200 <= total <= 1000
        alice = store.user_id("alice")
        assert alice is not None
        hits = store.search(alice, "<script>")
        assert hits, "some hostile mail"
    finally:
        store.pool.close()
    again = demo(data)
    assert again.returncode == 0 and "demo kept" in again.stdout


def test_make_arashi_makes_the_demo_and_serves_it():
    done = subprocess.run(["make", "-n", "arashi"], cwd=ROOT, capture_output=True, text=True,
                          timeout=30)
    assert done.returncode == 0, done.stderr
    assert "-m arashi.demo .arashi-demo" in done.stdout
    assert "arashi serve --data .arashi-demo --bind 127.0.0.1:8080" in done.stdout
    assert ".arashi-demo/" in (ROOT / ".gitignore").read_text().splitlines()
