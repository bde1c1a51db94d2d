"""Shared fixtures. The Picbreeder data lives outside the repository (DESIGN §5); tests that need
it use `picbreeder_dir`, which skips with the reason when it is absent."""

import os

import pytest
import torch

# Tests never download: a test that needs the Picbreeder data uses `picbreeder_dir` (skips when it
# is absent), and the download path is tested against a mirror on 127.0.0.1 (test_fer_data.py).
os.environ.setdefault("VOLRATIO_OFFLINE", "1")

torch.set_num_threads(1)  # the suite's numbers must not depend on the thread count
os.environ["VOLRATIO_THREADS"] = "1"  # … also inside the CLI, which sets its threads (volratio.threads)


@pytest.fixture(scope="session")
def picbreeder_dir():
    from volratio import picbreeder

    d = picbreeder.data_dir(required=False)
    if d is None:
        pytest.skip("Picbreeder data not found: set VOLRATIO_DATA or run `volratio data fetch`")
    return d
