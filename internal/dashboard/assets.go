package dashboard

import (
	"embed"
	"io/fs"
)

//go:embed web
var webFS embed.FS

// assets is the page: index.html, app.js and style.css, embedded so the
// binary needs no files and the page no network.
var assets = mustSub(webFS, "web")

func mustSub(f fs.FS, dir string) fs.FS {
	s, err := fs.Sub(f, dir)
	if err != nil { // only if the embed directive and dir disagree
		panic(err)
	}
	return s
}
