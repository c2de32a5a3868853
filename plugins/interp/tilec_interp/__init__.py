"""tilec's reference backend: runs the tile IR directly, vectorized over the grid with NumPy."""

__version__ = "0.1.0"
