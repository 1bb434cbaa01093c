"""`--ntdd-reuse DIR`: a notebook's verdicts reused from an earlier run when nothing that can
change them changed (`key`), kept one file per notebook in DIR (`store`), read and written
by one plugin (`hooks`)."""
