package bench

import (
	"os"
	"strings"
	"syscall"
	"testing"
	"time"
)

// burnCPU spins until the process has used at least d more CPU time.
func burnCPU(t *testing.T, d time.Duration) {
	t.Helper()
	var ru syscall.Rusage
	cpu := func() time.Duration {
		if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
			t.Fatal(err)
		}
		return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
	}
	start := cpu()
	x := 0
	for cpu()-start < d {
		for i := range 100000 {
			x += i
		}
	}
	_ = x
}

func TestProcCPUTimeAgreesWithGetrusage(t *testing.T) {
	before, err := ProcCPUTime(os.Getpid())
	if err != nil {
		t.Fatal(err)
	}
	burnCPU(t, 300*time.Millisecond)
	after, err := ProcCPUTime(os.Getpid())
	if err != nil {
		t.Fatal(err)
	}
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		t.Fatal(err)
	}
	rusage := time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
	// /proc counts in 10 ms ticks and is sampled a moment before Getrusage.
	if diff := rusage - after; diff < -50*time.Millisecond || diff > 100*time.Millisecond {
		t.Errorf("/proc says %v of CPU, getrusage %v", after, rusage)
	}
	if used := after - before; used < 250*time.Millisecond {
		t.Errorf("burned 300ms of CPU but /proc shows only %v more", used)
	}
}

func TestProcPeakRSSAgreesWithGetrusage(t *testing.T) {
	// Touch 64 MiB so the high-water mark is well above the runtime's noise.
	buf := make([]byte, 64<<20)
	for i := 0; i < len(buf); i += 4096 {
		buf[i] = 1
	}
	now, nowErr := ProcRSS(os.Getpid()) // before VmHWM, which is never below it
	peak, err := ProcPeakRSS(os.Getpid())
	if err != nil {
		t.Fatal(err)
	}
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		t.Fatal(err)
	}
	maxrss := uint64(ru.Maxrss) * 1024 // kilobytes on Linux
	if peak < 64<<20 {
		t.Errorf("peak RSS %d bytes, below the 64 MiB just touched", peak)
	}
	if lo, hi := maxrss*9/10, maxrss*11/10; peak < lo || peak > hi {
		t.Errorf("VmHWM %d bytes, getrusage maxrss %d bytes", peak, maxrss)
	}
	if nowErr != nil || now < 64<<20 || now > peak {
		t.Errorf("VmRSS %d bytes (%v): want the 64 MiB touched, at most VmHWM %d", now, nowErr, peak)
	}
	_ = buf[len(buf)-1]
}

func TestParseStatCPUTicksWithAwkwardCommandName(t *testing.T) {
	// pid (comm) state ppid pgrp session tty tpgid flags minflt cminflt majflt cmajflt utime stime ...
	stat := "4242 (my (odd) prog) R 1 4242 4242 0 -1 4194304 100 0 0 0 123 45 0 0 20 0 8 0 1000 0 0\n"
	ticks, err := parseStatCPUTicks([]byte(stat))
	if err != nil {
		t.Fatal(err)
	}
	if ticks != 168 {
		t.Errorf("ticks %d, want 123+45", ticks)
	}
	for _, bad := range []string{"no paren at all", "1 (x) R 1 2", "1 (x) R 1 1 1 0 -1 0 0 0 0 0 abc 1"} {
		if _, err := parseStatCPUTicks([]byte(bad)); err == nil {
			t.Errorf("parseStatCPUTicks(%q) accepted malformed input", bad)
		}
	}
}

func TestParseStatusKB(t *testing.T) {
	status := "Name:\tleasehold\nVmPeak:\t  900000 kB\nVmHWM:\t   51200 kB\nVmRSS:\t   40000 kB\n"
	got, err := parseStatusKB(strings.NewReader(status), "VmHWM")
	if err != nil {
		t.Fatal(err)
	}
	if got != 51200*1024 {
		t.Errorf("VmHWM %d bytes, want %d", got, 51200*1024)
	}
	if _, err := parseStatusKB(strings.NewReader("Name:\tx\n"), "VmHWM"); err == nil {
		t.Error("missing VmHWM accepted")
	}
	if _, err := parseStatusKB(strings.NewReader("VmHWM:\t12 MB\n"), "VmHWM"); err == nil {
		t.Error("unexpected unit accepted")
	}
}

func TestProcOfMissingProcess(t *testing.T) {
	// PIDs never exceed pid_max (at most 2^22), so this one cannot exist.
	if _, err := ProcCPUTime(1 << 30); err == nil {
		t.Error("CPU time of a non-existent process")
	}
	if _, err := ProcPeakRSS(1 << 30); err == nil {
		t.Error("peak RSS of a non-existent process")
	}
	if _, err := ProcRSS(1 << 30); err == nil {
		t.Error("RSS of a non-existent process")
	}
}
