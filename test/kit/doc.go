// Package kit is the shared test kit of userd's test suites.
package kit
