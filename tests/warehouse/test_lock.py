import subprocess
import sys
import time

import pytest

from warehouse.lock import WriterBusy, writer_lock

HOLD = """
import sys, time
from warehouse.lock import writer_lock
with writer_lock("test holder"):
    print("held", flush=True)
    time.sleep(float(sys.argv[1]))
"""


def hold_in_subprocess(seconds: float) -> subprocess.Popen:
    proc = subprocess.Popen([sys.executable, "-c", HOLD, str(seconds)], stdout=subprocess.PIPE, text=True)
    assert proc.stdout.readline().strip() == "held"
    return proc


def test_a_second_writer_gets_a_clear_message_naming_the_holder():
    proc = hold_in_subprocess(5)
    try:
        with pytest.raises(WriterBusy, match=rf"pid {proc.pid} \(test holder"), writer_lock("second", wait_s=0.3):
            pass
    finally:
        proc.kill()
        proc.wait()


def test_a_second_writer_waits_for_the_first_to_finish():
    proc = hold_in_subprocess(0.5)
    started = time.monotonic()
    with writer_lock("second", wait_s=10):
        waited = time.monotonic() - started
    proc.wait()
    assert 0.2 < waited < 10


def test_a_killed_holder_releases_the_lock():
    proc = hold_in_subprocess(60)
    proc.kill()
    proc.wait()
    with writer_lock("after the crash", wait_s=1):
        pass
