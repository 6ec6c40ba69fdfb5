package controller

import (
	"context"
	"encoding/json"
	"fmt"
	"sort"
	"strings"
	"sync"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// configChecks remembers, per cluster, the ConfigMap resourceVersion whose
// data was last read and found to be the rendered data. The cache holds
// ConfigMaps as metadata only, and the spec hash on them says what the
// operator applied, not what the data holds now: an edit of the data (by a
// Flink pod with the HA Role's ConfigMap rights, say) leaves the hash as it
// was. The data is read once per new resourceVersion, so a converged
// cluster costs no request, and not after the operator's own create, whose
// version holds what it sent.
type configChecks struct {
	mu       sync.Mutex
	verified map[types.NamespacedName]string
}

func (c *configChecks) seen(key types.NamespacedName, resourceVersion string) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.verified[key] == resourceVersion
}

func (c *configChecks) remember(key types.NamespacedName, resourceVersion string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.verified == nil {
		c.verified = map[types.NamespacedName]string{}
	}
	c.verified[key] = resourceVersion
}

func (c *configChecks) forget(key types.NamespacedName) {
	c.mu.Lock()
	defer c.mu.Unlock()
	delete(c.verified, key)
}

// configDrift is how a live ConfigMap differs from the rendered one.
type configDrift struct {
	// changed are rendered files the live data does not hold as rendered.
	changed []string
	// extra are files the rendering does not have.
	extra []string
}

func (d configDrift) drifted() bool { return len(d.changed)+len(d.extra) > 0 }

func (d configDrift) String() string {
	var parts []string
	if len(d.changed) > 0 {
		parts = append(parts, "changed "+strings.Join(d.changed, ", "))
	}
	if len(d.extra) > 0 {
		parts = append(parts, "added "+strings.Join(d.extra, ", "))
	}
	return strings.Join(parts, "; ")
}

// readConfigDrift reads the live ConfigMap, unless its resourceVersion was
// verified before, and compares its data with the rendered want.
func (r *Reconciler) readConfigDrift(ctx context.Context, key types.NamespacedName, cached client.Object, want map[string]string) (configDrift, error) {
	if r.configChecks.seen(key, cached.GetResourceVersion()) {
		return configDrift{}, nil
	}
	live := &corev1.ConfigMap{}
	if err := r.APIReader.Get(ctx, client.ObjectKeyFromObject(cached), live); err != nil {
		return configDrift{}, fmt.Errorf("read ConfigMap %s data: %w", cached.GetName(), err)
	}
	d := configDrift{changed: changedFiles(live.Data, want), extra: extraFiles(live, want)}
	if !d.drifted() {
		r.configChecks.remember(key, live.ResourceVersion)
	}
	return d, nil
}

// extraFiles are the keys of a ConfigMap's data and binaryData that the
// rendering does not hold: the volume would project each as a file in
// Flink's conf directory.
func extraFiles(cm *corev1.ConfigMap, want map[string]string) []string {
	var extra []string
	for k := range cm.Data {
		if _, ok := want[k]; !ok {
			extra = append(extra, k)
		}
	}
	for k := range cm.BinaryData {
		extra = append(extra, k)
	}
	sort.Strings(extra)
	return extra
}

// removeFiles deletes files someone added to the ConfigMap. The apply
// cannot: they belong to another field manager.
func (r *Reconciler) removeFiles(ctx context.Context, ns, name string, files []string) error {
	data, binary := map[string]any{}, map[string]any{}
	for _, f := range files {
		data[f], binary[f] = nil, nil
	}
	patch, err := json.Marshal(map[string]any{"data": data, "binaryData": binary})
	if err != nil {
		return err
	}
	cm := &corev1.ConfigMap{}
	cm.Namespace, cm.Name = ns, name
	if err := r.Client.Patch(ctx, cm, client.RawPatch(types.MergePatchType, patch), client.FieldOwner(FieldManager)); err != nil {
		return fmt.Errorf("remove files %v from ConfigMap %s: %w", files, name, err)
	}
	return nil
}

// changedFiles names the rendered files whose content the live data does
// not hold.
func changedFiles(live, want map[string]string) []string {
	var changed []string
	for k, v := range want {
		if got, ok := live[k]; !ok || got != v {
			changed = append(changed, k)
		}
	}
	sort.Strings(changed)
	return changed
}
