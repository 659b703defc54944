package connguard

import (
	"fmt"
	"math/rand/v2"
	"net/http"
)

// MaxGoawayChance is kube-apiserver's upper bound for --goaway-chance: one
// request in 50.
const MaxGoawayChance = 0.02

// checkGoawayChance refuses a chance outside [0, MaxGoawayChance] with
// kube-apiserver's message.
func checkGoawayChance(chance float64) error {
	if chance < 0 || chance > MaxGoawayChance {
		return fmt.Errorf("--goaway-chance can not be less than 0 or greater than 0.02")
	}
	return nil
}

// withGoaway is kube-apiserver's probabilistic GOAWAY: an HTTP/2 request is,
// with probability chance, answered with "Connection: close", which
// golang.org/x/net/http2's server turns into a graceful GOAWAY. The request
// itself and every other stream already open on the connection (watches
// included) finish normally; the client opens its next requests on a new
// connection, which a TCP load balancer may send to another replica. So
// clients that multiplex everything over one long-lived connection spread
// over the replicas behind a balancer over time instead of staying where
// they first landed. A chance of 0 returns next unchanged.
func withGoaway(next http.Handler, chance float64) http.Handler {
	if chance <= 0 {
		return next
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		// math/rand/v2's top-level functions are safe for concurrent use
		// and need no lock: the per-request cost is one Float64.
		if r.ProtoMajor == 2 && rand.Float64() < chance {
			w.Header().Set("Connection", "close")
		}
		next.ServeHTTP(w, r)
	})
}
