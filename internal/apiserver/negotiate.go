package apiserver

import (
	"mime"
	"sort"
	"strconv"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
)

// target says what representation the client asked for in Accept.
type target int

const (
	targetObject target = iota // the resource itself
	targetTable
	targetPartialObjectMetadata     // also PartialObjectMetadataList for lists
	targetPartialObjectMetadataList // only valid for lists
)

// negotiated is the outcome of content negotiation for a response.
type negotiated struct {
	info   runtime.SerializerInfo
	target target
	pretty bool
	// include is what Table rows carry (includeObject); set by
	// withTableOptions, empty means metadata.
	include metav1.IncludeObjectPolicy
}

// acceptItem is one entry of an Accept header.
type acceptItem struct {
	mediaType string
	params    map[string]string
	q         float64
	order     int
}

func parseAccept(header string) []acceptItem {
	var items []acceptItem
	for i, part := range strings.Split(header, ",") {
		part = strings.TrimSpace(part)
		if part == "" {
			continue
		}
		mt, params, err := mime.ParseMediaType(part)
		if err != nil {
			continue
		}
		q := 1.0
		if qs, ok := params["q"]; ok {
			if v, err := strconv.ParseFloat(qs, 64); err == nil {
				q = v
			}
		}
		items = append(items, acceptItem{mediaType: mt, params: params, q: q, order: i})
	}
	sort.SliceStable(items, func(a, b int) bool { return items[a].q > items[b].q })
	return items
}

// negotiate picks the response serializer and representation. allowList says
// whether list forms (PartialObjectMetadataList, Table of many rows) are
// acceptable. It returns ok=false when nothing in Accept can be served (406).
func (s *Server) negotiate(accept string, isList bool) (negotiated, bool) {
	if strings.TrimSpace(accept) == "" {
		accept = "application/json"
	}
	items, _ := s.accepts.get(accept)
	for _, item := range items {
		if item.q <= 0 {
			continue
		}
		info, ok := s.serializerFor(item.mediaType)
		if !ok {
			continue
		}
		n := negotiated{info: info, pretty: item.params["pretty"] == "1" || item.params["pretty"] == "true"}
		as := item.params["as"]
		if as == "" {
			return n, true
		}
		if item.params["g"] != "meta.k8s.io" || (item.params["v"] != "v1" && item.params["v"] != "v1beta1") {
			continue
		}
		switch as {
		case "Table":
			n.target = targetTable
		case "PartialObjectMetadata":
			if isList {
				continue
			}
			n.target = targetPartialObjectMetadata
		case "PartialObjectMetadataList":
			if !isList {
				continue
			}
			n.target = targetPartialObjectMetadataList
		default:
			continue
		}
		return n, true
	}
	return negotiated{}, false
}

// serializerFor maps a media type (with wildcards) to one of the codecs'.
func (s *Server) serializerFor(mediaType string) (runtime.SerializerInfo, bool) {
	switch mediaType {
	case "*/*", "application/*":
		mediaType = runtime.ContentTypeJSON
	}
	for _, info := range s.codecs.SupportedMediaTypes() {
		if info.MediaType == mediaType {
			return info, true
		}
	}
	return runtime.SerializerInfo{}, false
}
