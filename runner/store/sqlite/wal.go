package sqlite

import "database/sql"

// WALBytes returns the bytes run writes to the write-ahead log of the
// SQLite file at path (frames of a page and its header), starting from an
// empty log; the stores of this process hold their background
// checkpoints meanwhile, and run must write less than the 16,000 pages at
// which a store's writer checkpoints (autocheckpoint). For benchmarks.
func WALBytes(path string, run func()) (int64, error) {
	holdCheckpoints.Store(true)
	defer holdCheckpoints.Store(false)
	db, err := sql.Open("sqlite", path)
	if err != nil {
		return 0, err
	}
	defer db.Close()
	if _, err := db.Exec(`PRAGMA wal_checkpoint(TRUNCATE)`); err != nil {
		return 0, err
	}
	run()
	var busy, frames, done, pageSize int64
	if err := db.QueryRow(`PRAGMA wal_checkpoint(PASSIVE)`).Scan(&busy, &frames, &done); err != nil {
		return 0, err
	}
	if err := db.QueryRow(`PRAGMA page_size`).Scan(&pageSize); err != nil {
		return 0, err
	}
	return frames * (pageSize + 24), nil
}
