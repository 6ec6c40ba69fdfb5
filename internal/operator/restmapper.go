package operator

import (
	"net/http"
	"strings"
	"sync"

	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client/apiutil"
)

// newRESTMapper is controller-runtime's lazy discovery mapper, remembering
// each mapping it found. A cache over chosen namespaces (--watch-namespace,
// --ignore-namespace) asks the mapper whether the object is namespaced on
// every Get, and the mapper answers by walking every resource it knows:
// 6.4 % of the operator's CPU over 1000 new session clusters (its profile:
// IsObjectNamespaced under multiNamespaceCache.Get), for an answer that
// cannot change. A kind's resource and scope are fixed once it exists (a
// CustomResourceDefinition's name, the plural, and its scope are
// immutable), so only found mappings are kept; a kind not found yet is
// asked again, as the lazy mapper reloads discovery for it.
func newRESTMapper(cfg *rest.Config, httpClient *http.Client) (meta.RESTMapper, error) {
	m, err := apiutil.NewDynamicRESTMapper(cfg, httpClient)
	if err != nil {
		return nil, err
	}
	return &foundMappings{RESTMapper: m}, nil
}

// foundMappings remembers the mappings its RESTMapper found.
type foundMappings struct {
	meta.RESTMapper
	found sync.Map // mappingKey → meta.RESTMapping
}

type mappingKey struct {
	gk       schema.GroupKind
	versions string
}

// RESTMapping answers a mapping found before from memory, a copy each
// time, as the mapper returns a new one each time.
func (m *foundMappings) RESTMapping(gk schema.GroupKind, versions ...string) (*meta.RESTMapping, error) {
	key := mappingKey{gk: gk, versions: strings.Join(versions, ",")}
	if v, ok := m.found.Load(key); ok {
		mapping := v.(meta.RESTMapping)
		return &mapping, nil
	}
	mapping, err := m.RESTMapper.RESTMapping(gk, versions...)
	if err != nil {
		return nil, err
	}
	m.found.Store(key, *mapping)
	return mapping, nil
}
