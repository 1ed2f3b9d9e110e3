"""Fixtures of the training tests."""

import pytest
import torch


@pytest.fixture
def one_torch_thread():
    """Small networks on a shared CPU: one torch thread is fastest (more contend with the engine's
    and each other's, tens of times slower per gradient step on a busy 2-core machine)."""
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(threads)
