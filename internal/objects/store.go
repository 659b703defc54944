package objects

import (
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/managedfields"
	"sigs.k8s.io/structured-merge-diff/v6/fieldpath"

	"github.com/leasehold/leasehold/internal/admission"
	"github.com/leasehold/leasehold/internal/intern"
	"github.com/leasehold/leasehold/internal/registry"
	"github.com/leasehold/leasehold/internal/storage"
	"github.com/leasehold/leasehold/internal/watchcache"
)

// Config holds the object layer's dependencies.
type Config struct {
	Resources *registry.Set
	Scheme    *runtime.Scheme
	Storage   storage.Interface
	Cache     *watchcache.Cache
	// Form is the stored form of Cache's objects (NewForm).
	Form *Form
	// Intern, when set, is the table Cache's decoder interns with
	// (NewForm). With it, an update of a resource with HandOffUpdates
	// interns the object it writes and hands it to the cache
	// (watchcache.Cache.Expect, then CacheOptions' Adopt), which then does
	// not decode the stored value: a renewal decoded its lease twice.
	Intern *intern.Table
	// TypeConverter enables managedFields and server-side apply.
	TypeConverter managedfields.TypeConverter
	// Admission checks every write before it is stored; nil admits
	// everything.
	Admission admission.Interface
	// StorageReads, if set, counts the reads the cache could not answer,
	// by verb, group and resource.
	StorageReads *prometheus.CounterVec
	// Now is the clock of creation and deletion timestamps and managed
	// fields (nil: time.Now).
	Now func() time.Time
}

// Store is the object layer over storage and the watch cache: it reads
// objects as fresh as a request needs (fresh.go), creates, updates and
// deletes them (create.go, update.go, delete.go) with their preconditions,
// server-owned metadata, validation (validation.go), managed fields
// (managedfields.go) and admission (admit.go), and turns storage errors into
// the Status a client gets (errors.go).
type Store struct {
	storage      storage.Interface
	cache        *watchcache.Cache
	form         *Form
	intern       *intern.Table
	admission    admission.Interface
	resources    *registry.Set
	storageReads *prometheus.CounterVec
	now          func() time.Time
	managers     map[*registry.Resource]*fieldManagers
	// fieldSets memoizes parsed managedFields sets, which repeat.
	fieldSets *boundedCache[*fieldpath.Set]
	// stamps and ownedKeys serve the renewal shortcut (managedfields.go).
	stamps    secondStamps
	ownedKeys keyBuffers
	// wireScratch holds the cached object's encoding while RenewalFromWire
	// compares a request body with it.
	wireScratch keyBuffers
}

// NewStore returns the object layer cfg describes.
func NewStore(cfg Config) (*Store, error) {
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	managers, err := newFieldManagers(cfg)
	if err != nil {
		return nil, err
	}
	return &Store{
		storage:      cfg.Storage,
		cache:        cfg.Cache,
		form:         cfg.Form,
		intern:       cfg.Intern,
		admission:    cfg.Admission,
		resources:    cfg.Resources,
		storageReads: cfg.StorageReads,
		now:          cfg.Now,
		managers:     managers,
		fieldSets:    newBoundedCache(4096, parseFieldSet),
	}, nil
}

// WriteOptions are what every write takes besides its object.
type WriteOptions struct {
	DryRun       bool
	FieldManager string
	// ManagedFieldsDone is set by server-side apply, which computes
	// managedFields itself.
	ManagedFieldsDone bool
	// SharesWith is the cached object the update's object was built from
	// and shares memory with (RenewalFromWire's), or nil. Other goroutines
	// read it, so nothing may write into it: the hand-off interns against
	// it, whose own memory the walk leaves alone, and not against whatever
	// the cache holds by then, which may be another instance of the same
	// revision (the entry frozen and thawed, or relisted, in between).
	SharesWith runtime.Object
}

// MaxRetries bounds the attempts of a write that keeps losing a race with
// other writers (an update without a resourceVersion, a patch, a delete).
const MaxRetries = 5

// keyBuffers recycles scratch byte slices: ownsAll's lookup keys, and the
// encodings RenewalFromWire compares with.
type keyBuffers struct{ pool sync.Pool }

// maxKeyBytes bounds the key memory kept for reuse, as apiserver bounds
// its pooled bodies.
const maxKeyBytes = 16 << 10

func (p *keyBuffers) get() *[]byte {
	if b, ok := p.pool.Get().(*[]byte); ok {
		return b
	}
	return new([]byte)
}

func (p *keyBuffers) put(b *[]byte, used []byte) {
	if cap(used) > maxKeyBytes {
		return
	}
	*b = used[:0]
	p.pool.Put(b)
}
