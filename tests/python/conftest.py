"""What several tests/python files share: the example callables as
module-scoped fixtures and vector_example's golden in numpy."""
import pytest

import simpler


def vector_golden(a, b):
    """vector_example's f: c = a + b, f = (c + 1) * (c + 2) + c."""
    c = a + b
    return (c + 1) * (c + 2) + c


@pytest.fixture(scope="module")
def vec():
    return simpler.example("vector_example")


@pytest.fixture(scope="module")
def chain():
    return simpler.example("dummy_chain")
