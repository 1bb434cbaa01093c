"""What a run produces, in one direction: each report's record (`record`, with the cells
a phase ran from `cell_records`), one ledger per run (`ledger`), and what reads them:
the notebooks written back, the output checks, the job summary, and the files they
write (`files`)."""
