//go:build !linux

package main

// releaseBinaryPages does nothing outside Linux: the folio-sized mappings
// it undoes are Linux's page cache's (binarypages_linux.go).
func releaseBinaryPages() (uint64, error) { return 0, nil }
