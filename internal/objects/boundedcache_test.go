package objects

import (
	"strconv"
	"testing"
)

func TestBoundedCache(t *testing.T) {
	calls := map[string]int{}
	c := newBoundedCache(2, func(k string) (int, bool) {
		calls[k]++
		n, err := strconv.Atoi(k)
		return n, err == nil
	})
	for range 3 {
		if v, ok := c.get("1"); v != 1 || !ok {
			t.Fatalf("get(1) = %d, %v", v, ok)
		}
		if v, ok := c.getBytes([]byte("x")); ok {
			t.Fatalf("getBytes(x) = %d, %v: want the invalid key's ok=false kept", v, ok)
		}
		if v, ok := c.getBytes([]byte("3")); v != 3 || !ok {
			t.Fatalf("getBytes(3) = %d, %v", v, ok)
		}
	}
	// "1" and "x" filled the cache; "3" is computed every time.
	if calls["1"] != 1 || calls["x"] != 1 || calls["3"] != 3 {
		t.Fatalf("computations %v: want 1, x once each and 3 on every call past the bound", calls)
	}
	if n := testing.AllocsPerRun(100, func() { c.getBytes([]byte{'1'}) }); n != 0 {
		t.Errorf("a hit by bytes allocates %v times", n)
	}
}
