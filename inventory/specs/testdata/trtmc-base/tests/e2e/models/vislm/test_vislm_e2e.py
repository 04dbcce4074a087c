# Synthetic fixture: a family test file.
def test_nothing():
    assert True
