package embedded

import (
	"log/slog"
	"os"
	"testing"

	"go.uber.org/goleak"

	"github.com/leasehold/leasehold/internal/storage"
	"github.com/leasehold/leasehold/internal/storage/storagetest"
)

func TestMain(m *testing.M) {
	// The durability test re-executes this binary as the crashing writer.
	if os.Getenv(crashChildEnv) != "" {
		os.Exit(runCrashChild())
	}
	goleak.VerifyTestMain(m)
}

// openTest opens a store in a fresh temporary directory, closed at cleanup.
func openTest(t testing.TB, opts Options) *Store {
	t.Helper()
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	s, err := Open(t.TempDir(), opts)
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	t.Cleanup(func() {
		if err := s.Close(); err != nil {
			t.Errorf("Close: %v", err)
		}
	})
	return s
}

func TestConformance(t *testing.T) {
	storagetest.Run(t, func(t *testing.T) storage.Interface {
		return openTest(t, Options{})
	})
}
