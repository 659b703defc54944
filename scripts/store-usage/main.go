// Command store-usage reports what an embedded store holds: the logical
// bytes of its live states, of its log (every live key's newest value plus
// the retained history) and of its meta keys, against what its files take
// on disk. It opens the store itself, so stop the server first (pebble
// locks the directory):
//
//	go run ./scripts/store-usage DATA-DIR/db
package main

import (
	"fmt"
	"os"

	"github.com/leasehold/leasehold/internal/storage/embedded"
)

func main() {
	if len(os.Args) != 2 {
		fmt.Fprintln(os.Stderr, "usage: store-usage DIR (the db directory under serve's --data-dir)")
		os.Exit(2)
	}
	if err := run(os.Args[1]); err != nil {
		fmt.Fprintln(os.Stderr, "store-usage:", err)
		os.Exit(1)
	}
}

func run(dir string) error {
	if _, err := os.Stat(dir); err != nil {
		return err // Open would create an empty store
	}
	s, err := embedded.Open(dir, embedded.Options{})
	if err != nil {
		return fmt.Errorf("open %s: %w", dir, err)
	}
	u, err := s.Usage()
	if cerr := s.Close(); err == nil && cerr != nil {
		err = fmt.Errorf("close %s: %w", dir, cerr)
	}
	if err != nil {
		return err
	}
	mib := func(n int64) float64 { return float64(n) / (1 << 20) }
	fmt.Printf("states   %10d  %8.1f MiB\n", u.States, mib(u.StateBytes))
	fmt.Printf("records  %10d  %8.1f MiB\n", u.Records, mib(u.RecordBytes))
	fmt.Printf("meta                 %8.1f MiB\n", mib(u.MetaBytes))
	fmt.Printf("logical              %8.1f MiB\n", mib(u.LogicalBytes()))
	fmt.Printf("on disk              %8.1f MiB (%.2fx logical)\n", mib(int64(u.DiskBytes)), float64(u.DiskBytes)/float64(max(1, u.LogicalBytes())))
	return nil
}
