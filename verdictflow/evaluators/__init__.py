"""Pure scoring code: no I/O, no clock, no randomness. Same input + policy => same verdict."""
