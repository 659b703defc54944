package dashboard

import (
	"context"
	"fmt"

	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
)

// listPageSize is the page the dashboard lists in (client-go's reflector
// asks for the same).
const listPageSize = 500

// pagedList lists through list page by page and shrinks each page's items
// before it asks for the next, returning one list without a continue
// token. client-go's reflector would otherwise hold every page's full
// objects until the last page arrived: at 100,000 Nodes of about 3 KB
// (JSON) each, hundreds of MB alive at once, where the shrunk ones need a
// fraction of that.
func pagedList[L runtime.Object](ctx context.Context, o metav1.ListOptions, list func(context.Context, metav1.ListOptions) (L, error)) (runtime.Object, error) {
	if o.Limit <= 0 {
		o.Limit = listPageSize
	}
	var first runtime.Object
	var items []runtime.Object
	for {
		page, err := list(ctx, o)
		if err != nil {
			return nil, err
		}
		objs, err := apimeta.ExtractList(page)
		if err != nil {
			return nil, fmt.Errorf("reading a list page: %w", err)
		}
		for _, obj := range objs {
			if _, err := shrink(obj); err != nil {
				return nil, err
			}
		}
		items = append(items, objs...)
		lm, err := apimeta.ListAccessor(page)
		if err != nil {
			return nil, fmt.Errorf("reading a list page: %w", err)
		}
		if first == nil {
			first = page
		}
		if lm.GetContinue() == "" {
			break
		}
		// The token carries the first page's revision.
		o.Continue, o.ResourceVersion, o.ResourceVersionMatch = lm.GetContinue(), "", ""
	}
	if err := apimeta.SetList(first, items); err != nil {
		return nil, fmt.Errorf("joining list pages: %w", err)
	}
	lm, _ := apimeta.ListAccessor(first)
	lm.SetContinue("")
	lm.SetRemainingItemCount(nil)
	return first, nil
}
