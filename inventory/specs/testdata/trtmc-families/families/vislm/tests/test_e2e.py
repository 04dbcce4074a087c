# Synthetic fixture test in TRTMC's newer layout (not TRTMC content).
