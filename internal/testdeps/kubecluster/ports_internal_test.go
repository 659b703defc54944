package kubecluster

import (
	"errors"
	"net"
	"net/url"
	"strconv"
	"syscall"
	"testing"
	"time"
)

// TestStartMovesToNewPortsWhenTaken gives etcd, kube-apiserver and
// kube-controller-manager, on their first attempt, a port another listener
// holds (as when another test's process takes a port between the free-port
// probe and the bind): each must exit, and Start must bring it up on a new
// port.
func TestStartMovesToNewPortsWhenTaken(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = ln.Close() }()
	taken := ln.Addr().(*net.TCPAddr).Port
	forced := map[string]bool{}
	portOverride = func(component string, attempt int) int {
		if attempt == 1 && component != "etcd-peer" {
			forced[component] = true
			return taken
		}
		return 0
	}
	defer func() { portOverride = nil }()

	c := Start(t, Options{ControllerManager: true})
	for _, comp := range []string{"etcd", "kube-apiserver", "kube-controller-manager"} {
		if !forced[comp] {
			t.Errorf("%s never asked for a port", comp)
		}
	}
	for name, raw := range map[string]string{"etcd": c.EtcdURL, "kube-apiserver": c.URL} {
		u, err := url.Parse(raw)
		if err != nil {
			t.Fatal(err)
		}
		if u.Port() == strconv.Itoa(taken) {
			t.Errorf("%s serves on the taken port %d", name, taken)
		}
	}
	for _, p := range []*process{c.etcd, c.apiserver, c.kcm} {
		if !p.logContains("address already in use") {
			t.Errorf("%s's log does not show the failed bind on port %d:\n%s", p.name, taken, p.tail(20))
		}
		if !p.running() {
			t.Errorf("%s is not running", p.name)
		}
	}
	c.WaitControllerManagerLeader(t, time.Minute)

	// Stop (also the cleanup's) leaves none of the processes behind.
	pids := []int{c.EtcdPID(), c.APIServerPID(), c.ControllerManagerPID()}
	c.Stop()
	for _, pid := range pids {
		if err := syscall.Kill(pid, 0); !errors.Is(err, syscall.ESRCH) {
			t.Errorf("pid %d after Stop: kill -0 = %v, want ESRCH", pid, err)
		}
	}
}
