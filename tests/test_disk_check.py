"""run.sh and test.sh stop at once, in one sentence, when the disk is too full for what they start (envs/disk.sh)."""

import os
import re
import subprocess

from conftest import ROOT


def disk_check(call: str, **env) -> subprocess.CompletedProcess:
    script = f'source envs/disk.sh; {call}; echo "went on"'
    return subprocess.run(["bash", "-c", script], cwd=ROOT, env={**os.environ, **env}, capture_output=True, text=True)


def test_too_little_free_disk_stops_with_one_sentence(tmp_path):
    done = disk_check(f'require_free_disk "{tmp_path}" 1000000 "The default run"')
    assert done.returncode == 1 and done.stdout == ""
    assert re.fullmatch(rf"Error: The default run needs about 1000000 GB of free disk in {tmp_path}, where \d+ GB are "
                        r"free\. Free some space, or set BEHIND_ROPE_DISK_CHECK=0 to go on anyway\.\n", done.stderr)


def test_enough_free_disk_or_the_check_turned_off_goes_on(tmp_path):
    assert disk_check(f'require_free_disk "{tmp_path}" 0 "The tests"').stdout == "went on\n"
    turned_off = disk_check(f'require_free_disk "{tmp_path}" 1000000 "The tests"', BEHIND_ROPE_DISK_CHECK="0")
    assert turned_off.stdout == "went on\n"


def test_what_results_already_holds_counts_towards_a_default_run(tmp_path):
    missing = disk_check(f'echo "$DEFAULT_RUN_GB $(gb_to_add_to_results "{tmp_path}/results")"')
    need, to_add = missing.stdout.split()[:2]
    assert to_add == need and int(need) > 5
    (tmp_path / "results").mkdir()
    five_gb = 'du() { echo "5000000 $2"; }'  # du -sk as it would answer for 5 GB of results
    held = disk_check(f'{five_gb}; gb_to_add_to_results "{tmp_path}/results"')
    assert held.stdout.split()[0] == str(int(need) - 5)
    more_than_a_run = disk_check(f'{five_gb}; DEFAULT_RUN_GB=4; gb_to_add_to_results "{tmp_path}/results"')
    assert more_than_a_run.stdout.split()[0] == "0"
