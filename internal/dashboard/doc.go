// Package dashboard is `leasehold dashboard`: a loopback web page that shows
// a fleet's node heartbeats, its leader-election leases and what needs
// attention, live, at 100,000 nodes.
//
// The process does the work and the browser only draws. A lease source
// (leasewatch.go: a list and watch that decodes only the fields shown) and
// informers on Nodes and events (client-go), all with the user's own
// credentials, feed a Fleet, which keeps one small record per lease and per
// node. A ticker turns the Fleet into a Summary a few times a
// second: counts, an age histogram, the leaders and their timelines, the
// attention list, and the heat map as each node lease's renewal time and
// duration (heatmap.go). Each browser holds ONE Server-Sent Events stream;
// on every tick it receives the summary, the heat-map cells that changed
// since the previous tick (the whole map first, or after a missed tick or a
// lease coming or going), and the rows of its own view (a filter, an offset
// and a page size it posts to /view) when they changed, never the full list.
// The page computes ages and colours from the summary's clock.
//
// Invariants: the Fleet is guarded by one mutex and never holds API objects,
// only the fields the page shows; every goroutine (lease source, informers, ticker, one
// writer per stream, the HTTP server) is owned by Run and stops when its
// context ends; the page needs no network beyond the loopback listener
// (assets are embedded).
package dashboard
