package connguard

import (
	"testing"
	"time"
)

func TestShareFiles(t *testing.T) {
	for _, tc := range []struct {
		soft               uint64
		reserved, maxConns int
		want               fileLimits
		clamped, fails     bool
	}{
		{soft: 1 << 20, want: fileLimits{reserved: 104857, connections: 1<<20 - 104857}},
		{soft: 20000, want: fileLimits{reserved: 2000, connections: 18000}},
		{soft: 4096, want: fileLimits{reserved: 1280, connections: 2816}},
		{soft: 1024, want: fileLimits{reserved: 512, connections: 512}},
		{soft: 20000, maxConns: 500, want: fileLimits{reserved: 2000, connections: 500}},
		{soft: 20000, maxConns: 19000, want: fileLimits{reserved: 2000, connections: 18000}, clamped: true},
		{soft: 20000, reserved: 100, want: fileLimits{reserved: 100, connections: 19900}},
		{soft: 1000, reserved: 1000, fails: true},
	} {
		got, clamped, err := shareFiles(tc.soft, tc.reserved, tc.maxConns)
		if (err != nil) != tc.fails {
			t.Errorf("shareFiles(%d, %d, %d) error %v, want failure %v", tc.soft, tc.reserved, tc.maxConns, err, tc.fails)
			continue
		}
		if tc.fails {
			continue
		}
		tc.want.soft = tc.soft
		if got != tc.want || clamped != tc.clamped {
			t.Errorf("shareFiles(%d, %d, %d) = %+v clamped %v, want %+v clamped %v", tc.soft, tc.reserved, tc.maxConns, got, clamped, tc.want, tc.clamped)
		}
	}
}

func TestRaiseFileLimitReachesHard(t *testing.T) {
	soft, hard, err := raiseFileLimit()
	if err != nil {
		t.Fatal(err)
	}
	if soft != hard {
		t.Errorf("soft limit %d after raising, want the hard %d", soft, hard)
	}
}

func TestSummaryLogsOncePerInterval(t *testing.T) {
	s := summary{every: 10 * time.Second}
	t0 := time.Unix(1000, 0)
	var lines []int
	for i := range 25 {
		if n, due := s.note(t0.Add(time.Duration(i) * time.Second)); due {
			lines = append(lines, n)
		}
	}
	// Lines at 0 s (the first event), 10 s (events 1..10) and 20 s (11..20).
	if len(lines) != 3 || lines[0] != 1 || lines[1] != 10 || lines[2] != 10 {
		t.Errorf("lines covered %v events, want [1 10 10]", lines)
	}
}
