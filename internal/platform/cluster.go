package platform

import (
	"bytes"
	"context"
	"embed"
	"encoding/json"
	"fmt"
	"io/fs"
	"net/http"
	"os"
	"path/filepath"
	"sort"

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apiextensionsclient "k8s.io/apiextensions-apiserver/pkg/client/clientset/clientset"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/kubernetes"
	"sigs.k8s.io/yaml"

	"github.com/datapilot/datapilot/config/crd"
	"github.com/datapilot/datapilot/internal/resources"
)

// KwokNodeAnnotation marks the nodes kwok manages; its value is "fake".
const KwokNodeAnnotation = "kwok.x-k8s.io/node"

// FakeNodeLabel is set to "kwok" on every fake node.
const FakeNodeLabel = "type"

// Each fake node's pod CIDR is a /20 (4094 addresses) from 10.64.0.0/10 on.
const (
	maxNodes       = 3072
	maxPodsPerNode = 4000
)

// The kwok stages are our own, embedded, rather than the ones that ship as Go
// packages in the kwok module (sigs.k8s.io/kwok/kustomize/stage/...): adding
// sigs.k8s.io/kwok to the main module would pull its whole dependency graph
// (gRPC, OpenTelemetry, older k8s.io pins) into go.mod for a few YAML strings.
// They follow the behaviour documented for kwok's "fast" node, node
// heartbeat-with-lease and "fast" pod stages.
//
//go:embed stages/*.yaml
var stages embed.FS

// writeStages writes every stage into one multi-document file for kwok's
// --config and returns its path.
func writeStages(dir string) (string, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", fmt.Errorf("creating kwok dir: %w", err)
	}
	names, err := fs.Glob(stages, "stages/*.yaml")
	if err != nil {
		return "", err
	}
	sort.Strings(names)
	var b bytes.Buffer
	for _, n := range names {
		data, err := stages.ReadFile(n)
		if err != nil {
			return "", err
		}
		b.WriteString("---\n")
		b.Write(data)
	}
	path := filepath.Join(dir, "stages.yaml")
	if err := os.WriteFile(path, b.Bytes(), 0o644); err != nil {
		return "", fmt.Errorf("writing kwok stages: %w", err)
	}
	return path, nil
}

func etcdHealthy(ctx context.Context, url string) (bool, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url+"/health", nil)
	if err != nil {
		return false, err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return false, err
	}
	defer resp.Body.Close()
	var h struct {
		Health string `json:"health"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&h); err != nil {
		return false, err
	}
	return h.Health == "true", nil
}

// fakeNode returns the i-th fake node: kwok-managed, untainted, with the
// configured capacity, its own pod CIDR and internal IP.
func fakeNode(i int, o Options) (*corev1.Node, error) {
	capacity := corev1.ResourceList{}
	for name, v := range map[corev1.ResourceName]string{
		corev1.ResourceCPU:              o.NodeCPU,
		corev1.ResourceMemory:           o.NodeMemory,
		corev1.ResourcePods:             fmt.Sprint(o.NodePods),
		corev1.ResourceEphemeralStorage: "1Ti",
	} {
		q, err := resource.ParseQuantity(v)
		if err != nil {
			return nil, fmt.Errorf("node %s %q: %w", name, v, err)
		}
		capacity[name] = q
	}
	name := fmt.Sprintf("kwok-node-%d", i)
	// 10.64.0.0 + i*4096: a /20 per node.
	base := 64<<16 + i<<12
	podCIDR := fmt.Sprintf("10.%d.%d.0/20", base>>16, (base>>8)&0xff)
	return &corev1.Node{
		ObjectMeta: metav1.ObjectMeta{
			Name: name,
			Labels: map[string]string{
				corev1.LabelHostname:     name,
				corev1.LabelOSStable:     "linux",
				corev1.LabelArchStable:   "amd64",
				corev1.LabelTopologyZone: fmt.Sprintf("local-%c", 'a'+i%3),
				FakeNodeLabel:            "kwok",
				"node.kubernetes.io/exclude-from-external-load-balancers": "true",
			},
			Annotations: map[string]string{
				KwokNodeAnnotation:             "fake",
				"node.alpha.kubernetes.io/ttl": "0",
			},
		},
		Spec: corev1.NodeSpec{PodCIDR: podCIDR, PodCIDRs: []string{podCIDR}},
		Status: corev1.NodeStatus{
			Capacity:    capacity,
			Allocatable: capacity,
			Addresses: []corev1.NodeAddress{
				{Type: corev1.NodeInternalIP, Address: fmt.Sprintf("172.30.%d.%d", i/250, i%250+1)},
				{Type: corev1.NodeHostName, Address: name},
			},
		},
	}, nil
}

// createNodes creates the fake nodes and waits until each is Ready and
// untainted (the controller-manager removes the not-ready taint).
func (p *Platform) createNodes(ctx context.Context, cs kubernetes.Interface) error {
	for i := range p.opts.Nodes {
		node, err := fakeNode(i, p.opts)
		if err != nil {
			return err
		}
		if _, err := cs.CoreV1().Nodes().Create(ctx, node, metav1.CreateOptions{}); err != nil {
			return fmt.Errorf("creating node %s: %w", node.Name, err)
		}
	}
	return p.poll(ctx, "fake nodes Ready", func(ctx context.Context) (bool, error) {
		nodes, err := cs.CoreV1().Nodes().List(ctx, metav1.ListOptions{})
		if err != nil {
			return false, err
		}
		ready := 0
		for _, n := range nodes.Items {
			if nodeReady(&n) && len(n.Spec.Taints) == 0 {
				ready++
			}
		}
		if ready < p.opts.Nodes {
			return false, fmt.Errorf("%d of %d nodes Ready and untainted", ready, p.opts.Nodes)
		}
		return true, nil
	})
}

func nodeReady(n *corev1.Node) bool {
	for _, c := range n.Status.Conditions {
		if c.Type == corev1.NodeReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}

// waitDefaultServiceAccount waits for the controller-manager to create the
// default ServiceAccount, without which no pod can be admitted in default.
func (p *Platform) waitDefaultServiceAccount(ctx context.Context, cs kubernetes.Interface) error {
	return p.poll(ctx, "default ServiceAccount", func(ctx context.Context) (bool, error) {
		_, err := cs.CoreV1().ServiceAccounts(metav1.NamespaceDefault).Get(ctx, "default", metav1.GetOptions{})
		return err == nil, err
	})
}

// installCRDs creates Datapilot's CRDs (config/crd/bases) and waits until
// each is Established.
func (p *Platform) installCRDs(ctx context.Context) error {
	crds, err := loadCRDs()
	if err != nil {
		return err
	}
	cs, err := apiextensionsclient.NewForConfig(p.RESTConfig())
	if err != nil {
		return fmt.Errorf("creating apiextensions client: %w", err)
	}
	for _, c := range crds {
		_, err := cs.ApiextensionsV1().CustomResourceDefinitions().Create(ctx, c, metav1.CreateOptions{})
		if apierrors.IsAlreadyExists(err) {
			continue
		}
		if err != nil {
			return fmt.Errorf("creating CRD %s: %w", c.Name, err)
		}
	}
	for _, c := range crds {
		name := c.Name
		err := p.poll(ctx, "CRD "+name+" Established", func(ctx context.Context) (bool, error) {
			got, err := cs.ApiextensionsV1().CustomResourceDefinitions().Get(ctx, name, metav1.GetOptions{})
			if err != nil {
				return false, err
			}
			for _, cond := range got.Status.Conditions {
				if cond.Type == apiextensionsv1.Established && cond.Status == apiextensionsv1.ConditionTrue {
					return true, nil
				}
			}
			return false, nil
		})
		if err != nil {
			return err
		}
	}
	// Established is not yet in discovery: the API server publishes it a
	// moment later, and a client whose REST mapper looks before then finds
	// "no matches for kind". Start returns once every served version is
	// discoverable.
	dc, err := discovery.NewDiscoveryClientForConfig(p.RESTConfig())
	if err != nil {
		return fmt.Errorf("creating discovery client: %w", err)
	}
	for _, c := range crds {
		for _, v := range c.Spec.Versions {
			if !v.Served {
				continue
			}
			gv, plural := c.Spec.Group+"/"+v.Name, c.Spec.Names.Plural
			err := p.poll(ctx, "CRD "+c.Name+" "+v.Name+" discoverable", func(context.Context) (bool, error) {
				list, err := dc.ServerResourcesForGroupVersion(gv)
				if apierrors.IsNotFound(err) {
					return false, nil
				}
				if err != nil {
					return false, err
				}
				for _, r := range list.APIResources {
					if r.Name == plural {
						return true, nil
					}
				}
				return false, nil
			})
			if err != nil {
				return err
			}
		}
	}
	return nil
}

// loadCRDs decodes every CRD embedded in config/crd.
func loadCRDs() ([]*apiextensionsv1.CustomResourceDefinition, error) {
	names, err := fs.Glob(crd.Bases, "bases/*.yaml")
	if err != nil {
		return nil, err
	}
	sort.Strings(names)
	var out []*apiextensionsv1.CustomResourceDefinition
	for _, n := range names {
		data, err := crd.Bases.ReadFile(n)
		if err != nil {
			return nil, err
		}
		for _, doc := range bytes.Split(data, []byte("\n---")) {
			if len(bytes.TrimSpace(bytes.Trim(bytes.TrimSpace(doc), "-"))) == 0 {
				continue
			}
			c := &apiextensionsv1.CustomResourceDefinition{}
			if err := yaml.Unmarshal(doc, c); err != nil {
				return nil, fmt.Errorf("decoding %s: %w", n, err)
			}
			if c.Kind != "CustomResourceDefinition" {
				continue
			}
			out = append(out, c)
		}
	}
	return out, nil
}

// installFlinkHARole creates the ClusterRole the chart and config/rbac ship
// for the Flink pods of clusters with Kubernetes HA: the operator binds it
// to each such cluster's account and holds no ConfigMap rights of its own,
// so without it Flink's leader election is refused, as on a real cluster
// installed without the chart.
func (p *Platform) installFlinkHARole(ctx context.Context, cs kubernetes.Interface) error {
	role := &rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: resources.DefaultHAClusterRole},
		Rules: []rbacv1.PolicyRule{{APIGroups: []string{""}, Resources: []string{"configmaps"}, Verbs: resources.HAConfigMapVerbs()}}}
	if _, err := cs.RbacV1().ClusterRoles().Create(ctx, role, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("create ClusterRole %s: %w", role.Name, err)
	}
	return nil
}
