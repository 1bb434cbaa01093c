"""Running a notebook's tests: each phase as a kernel runs cells, within its time
(`hooks`), a test that outlives its timeout ended (`overrun`), and smoke mode (`smoke`)."""
