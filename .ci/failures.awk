# failures.awk LOG...: prints the "--- FAIL" lines of the test logs, less
# those of a fuzz run that the Makefile's fuzz-run reported as Go's
# coordinator stopping at -fuzztime with no failing input
# (golang/go#75804) and did not fail on. Only the lines printed within
# that target's own fuzz run are left out (between its "fuzz: NAME in DIR
# for T" header and the next one), so a failure of the same target as a
# test under `go test -v` still counts, and so does a fuzz run that wrote
# a failing input. .ci/run counts and lists what it prints; test/ci
# checks it.
function flush(  i) { for (i = 1; i <= held; i++) print kept[i]; held = 0 }
/^fuzz: Fuzz[A-Za-z0-9_]+ in .* for [0-9]/ { flush(); fuzzing = 1; name = $2; next }
fuzzing && index($0, "fuzz: " name ": Go's fuzz coordinator stopped at -fuzztime with no failing input") == 1 { held = 0; next }
/^[[:space:]]*--- FAIL/ { if (fuzzing) kept[++held] = $0; else print; next }
END { flush() }
