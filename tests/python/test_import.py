"""The package imports from the build tree and carries libsimpler's version and status table."""
import simpler


def test_version_matches_library():
    assert simpler.__version__ == simpler._simpler.VERSION
    assert simpler.__version__.count(".") == 2


def test_status_table_has_every_code():
    rows = simpler._simpler.statuses()
    names = {name for _, name, _ in rows}
    assert ("SP_OK" in names) and ("SP_EARG_SIGNATURE" in names)
    assert all(value <= 0 for value, _, _ in rows)
    assert simpler._simpler.status_name(-49) == "SP_EARG_SIGNATURE"
