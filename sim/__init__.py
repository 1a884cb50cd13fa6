"""The live-room simulator: catalogs, viewers, vectorized rooms, tool sandbox,
oracle teacher and rewards."""
