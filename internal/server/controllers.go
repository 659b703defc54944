package server

import (
	"github.com/leasehold/leasehold/internal/controller"
	"github.com/leasehold/leasehold/internal/controller/garbagecollector"
)

// controllers lists the controllers `serve` runs, given their shared
// dependencies. Each returns when the server's background context ends.
func controllers(cc controller.Context, cfg Config) []controller.Runner {
	return []controller.Runner{
		garbagecollector.New(cc),
	}
}
