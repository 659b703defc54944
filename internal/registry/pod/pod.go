// Package pod describes core v1 Pods. Leasehold runs no containers and
// schedules nothing: it serves pods as plain records so that tools which look
// up a node's pods work unchanged (kubectl describe node lists them with the
// field selector spec.nodeName=NAME and fails outright on a 404). Only the
// metadata is validated; the spec is stored as given.
package pod

import (
	"fmt"
	"strconv"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/leasehold/leasehold/internal/registry"
)

// Resource returns the descriptor of core v1 pods.
func Resource(now func() time.Time) *registry.Resource {
	return &registry.Resource{
		GroupVersion:      corev1.SchemeGroupVersion,
		Resource:          "pods",
		SingularName:      "pod",
		Kind:              "Pod",
		ListKind:          "PodList",
		ShortNames:        []string{"po"},
		Categories:        []string{"all"},
		Namespaced:        true,
		StatusSubresource: true,
		New:               func() runtime.Object { return &corev1.Pod{} },
		NewList:           func() runtime.Object { return &corev1.PodList{} },
		PrepareForUpdate: func(obj, old runtime.Object, subresource string) {
			p, o := obj.(*corev1.Pod), old.(*corev1.Pod)
			if subresource == "status" {
				p.Spec = o.Spec
			} else {
				p.Status = o.Status
			}
		},
		// The field selectors kube-apiserver's pod registry supports.
		SelectableFields: func(obj runtime.Object) fields.Set {
			p := obj.(*corev1.Pod)
			return fields.Set{
				"spec.nodeName":            p.Spec.NodeName,
				"spec.restartPolicy":       string(p.Spec.RestartPolicy),
				"spec.schedulerName":       p.Spec.SchedulerName,
				"spec.serviceAccountName":  p.Spec.ServiceAccountName,
				"spec.hostNetwork":         strconv.FormatBool(p.Spec.HostNetwork),
				"status.phase":             string(p.Status.Phase),
				"status.podIP":             p.Status.PodIP,
				"status.nominatedNodeName": p.Status.NominatedNodeName,
			}
		},
		TableColumns: []metav1.TableColumnDefinition{
			registry.NameColumn,
			{Name: "Ready", Type: "string", Description: "The aggregate readiness state of this pod for accepting traffic."},
			{Name: "Status", Type: "string", Description: "The aggregate status of the containers in this pod."},
			{Name: "Restarts", Type: "string", Description: "The number of times the containers in this pod have been restarted."},
			registry.AgeColumn,
		},
		TableRow: func(obj runtime.Object) []interface{} {
			p := obj.(*corev1.Pod)
			ready, restarts := 0, int32(0)
			for _, c := range p.Status.ContainerStatuses {
				if c.Ready {
					ready++
				}
				restarts += c.RestartCount
			}
			status := string(p.Status.Phase)
			if p.Status.Reason != "" {
				status = p.Status.Reason
			}
			return []interface{}{p.Name, fmt.Sprintf("%d/%d", ready, len(p.Spec.Containers)), status, strconv.Itoa(int(restarts)), registry.Age(p.CreationTimestamp, now())}
		},
	}
}
