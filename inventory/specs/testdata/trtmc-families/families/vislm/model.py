# Synthetic fixture family in TRTMC's newer layout (not TRTMC content).
