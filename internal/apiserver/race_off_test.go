//go:build !race

package apiserver_test

// raceEnabled tells whether this test binary runs under the race detector.
const raceEnabled = false
