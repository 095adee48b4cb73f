"""One trial reviewed: the per-trial record, the review options, the single-trial review
(scan, gate, audits) and the plain tables the assets store."""
