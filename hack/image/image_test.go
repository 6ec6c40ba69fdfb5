package main

import (
	"archive/tar"
	"bufio"
	"debug/elf"
	"encoding/json"
	"errors"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/layout"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
)

const root = "../.."

// testVersion is stamped into the test's binary, so a version read back
// from the image proves the stamping, not a default.
const testVersion = "0.0.0-imagetest"

// buildBinary builds cmd/datapilot as make image does, for this machine's
// architecture so the test can run it.
func buildBinary(t *testing.T) string {
	t.Helper()
	out := filepath.Join(t.TempDir(), "datapilot")
	cmd := exec.Command("go", "build", "-trimpath",
		"-ldflags", "-s -w -X github.com/datapilot/datapilot/internal/buildinfo.version="+testVersion+" -X github.com/datapilot/datapilot/internal/buildinfo.revision=abc123",
		"-o", out, "./cmd/datapilot")
	cmd.Dir = root
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0", "GOOS=linux", "GOARCH="+runtime.GOARCH)
	if raw, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("go build ./cmd/datapilot: %v\n%s", err, raw)
	}
	return out
}

func spec(binary string) Spec {
	return Spec{
		Binary: binary, Rootfs: "rootfs",
		Platform: v1.Platform{OS: "linux", Architecture: runtime.GOARCH},
		Version:  testVersion, Revision: "abc123", Source: "https://github.com/datapilot/datapilot",
		Created: time.Unix(1764590400, 0).UTC(),
	}
}

// TestImageArchive builds the image, writes the archive make image writes,
// reads it back and inspects it: entrypoint, user, labels, files, and the
// binary inside running `version`.
func TestImageArchive(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("runs the image's linux binary")
	}
	s := spec(buildBinary(t))
	img, err := Build(s)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	archive := filepath.Join(dir, "datapilot-image.tar")
	ref, _ := name.NewTag("ghcr.io/datapilot/datapilot:" + testVersion)
	if err := WriteArchive(archive, ref, img); err != nil {
		t.Fatal(err)
	}
	got, err := tarball.ImageFromPath(archive, &ref)
	if err != nil {
		t.Fatalf("reading the archive back: %v", err)
	}
	cf, err := got.ConfigFile()
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(cf.Config.Entrypoint, []string{"/datapilot"}) || !slices.Equal(cf.Config.Cmd, []string{"operator"}) {
		t.Errorf("entrypoint %v cmd %v, want [/datapilot] [operator]", cf.Config.Entrypoint, cf.Config.Cmd)
	}
	if cf.Config.User != "65532:65532" {
		t.Errorf("user %q, want the numeric non-root 65532:65532", cf.Config.User)
	}
	if cf.OS != "linux" || cf.Architecture != runtime.GOARCH {
		t.Errorf("platform %s/%s", cf.OS, cf.Architecture)
	}
	for k, want := range map[string]string{
		"org.opencontainers.image.source":   "https://github.com/datapilot/datapilot",
		"org.opencontainers.image.version":  testVersion,
		"org.opencontainers.image.revision": "abc123",
		"org.opencontainers.image.created":  "2025-12-01T12:00:00Z",
	} {
		if cf.Config.Labels[k] != want {
			t.Errorf("label %s = %q, want %q", k, cf.Config.Labels[k], want)
		}
	}

	files := listFiles(t, got)
	want := map[string]int64{"etc": 0o755, "etc/group": 0o644, "etc/passwd": 0o644, "tmp": 0o1777, "datapilot": 0o755}
	for f, mode := range want {
		if files[f] == nil {
			t.Errorf("the image lacks %s", f)
		} else if files[f].Mode != mode {
			t.Errorf("%s has mode %o, want %o", f, files[f].Mode, mode)
		}
	}
	for f := range files {
		if _, ok := want[f]; !ok {
			t.Errorf("the image holds %s, beyond the binary, passwd, group and /tmp (no shell, nothing else)", f)
		}
	}

	// The binary inside: static, and it reports the stamped version.
	bin := extract(t, got, "datapilot", filepath.Join(dir, "datapilot"))
	if f, err := elf.Open(bin); err != nil {
		t.Fatal(err)
	} else {
		for _, p := range f.Progs {
			if p.Type == elf.PT_INTERP {
				t.Errorf("the binary has a dynamic loader: it is not static")
			}
		}
		f.Close()
	}
	out, err := exec.Command(bin, "version", "--short").Output()
	if err != nil {
		t.Fatalf("datapilot version --short from the image: %v", err)
	}
	if strings.TrimSpace(string(out)) != testVersion {
		t.Errorf("datapilot version --short = %q, want %q", out, testVersion)
	}
	long, err := exec.Command(bin, "version").Output()
	if err != nil || !strings.Contains(string(long), "revision abc123") {
		t.Errorf("datapilot version = %q (%v), want the revision", long, err)
	}

	// The OCI layout names the same image.
	oci := filepath.Join(dir, "oci")
	if err := WriteLayout(oci, ref, img); err != nil {
		t.Fatal(err)
	}
	idx, err := layout.ImageIndexFromPath(oci)
	if err != nil {
		t.Fatal(err)
	}
	m, err := idx.IndexManifest()
	if err != nil {
		t.Fatal(err)
	}
	// A docker-archive keeps no manifest (readers rebuild one), so the
	// layout is compared with the built image.
	d1, _ := img.Digest()
	if len(m.Manifests) != 1 || m.Manifests[0].Digest != d1 || m.Manifests[0].Annotations["org.opencontainers.image.ref.name"] != testVersion {
		t.Errorf("OCI layout index %+v, want the one image %s named %s", m.Manifests, d1, testVersion)
	}
}

// TestImageIsReproducible: the same binary and commit time give the same
// digest, so a rebuild can be checked against a pushed image.
func TestImageIsReproducible(t *testing.T) {
	bin := buildBinary(t)
	a, err := Build(spec(bin))
	if err != nil {
		t.Fatal(err)
	}
	b, err := Build(spec(bin))
	if err != nil {
		t.Fatal(err)
	}
	da, _ := a.Digest()
	db, _ := b.Digest()
	if da != db {
		t.Errorf("two builds of the same inputs: %s and %s", da, db)
	}
}

func listFiles(t *testing.T, img v1.Image) map[string]*tar.Header {
	t.Helper()
	rc := mutate.Extract(img)
	defer rc.Close()
	tr := tar.NewReader(rc)
	out := map[string]*tar.Header{}
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			return out
		}
		if err != nil {
			t.Fatal(err)
		}
		out[h.Name] = h
	}
}

func extract(t *testing.T, img v1.Image, file, to string) string {
	t.Helper()
	rc := mutate.Extract(img)
	defer rc.Close()
	tr := tar.NewReader(rc)
	for {
		h, err := tr.Next()
		if err != nil {
			t.Fatalf("%s not found in the image: %v", file, err)
		}
		if h.Name != file {
			continue
		}
		f, err := os.OpenFile(to, os.O_CREATE|os.O_WRONLY, 0o755)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := io.Copy(f, tr); err != nil {
			t.Fatal(err)
		}
		f.Close()
		return to
	}
}

// TestDockerfileMatches holds the Dockerfile to this builder: same base
// (scratch), user, entrypoint, command and label keys, and the same rootfs.
func TestDockerfileMatches(t *testing.T) {
	raw, err := os.ReadFile(filepath.Join(root, "Dockerfile"))
	if err != nil {
		t.Fatal(err)
	}
	// Join continuation lines, then read the final stage's instructions.
	text := strings.ReplaceAll(string(raw), "\\\n", " ")
	var final []string
	sc := bufio.NewScanner(strings.NewReader(text))
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		if strings.HasPrefix(line, "FROM ") {
			final = nil
		}
		final = append(final, line)
	}
	if len(final) == 0 || final[0] != "FROM scratch" {
		t.Fatalf("the Dockerfile's final stage is %q, want FROM scratch", final[:1])
	}
	find := func(instr string) string {
		for _, l := range final {
			if strings.HasPrefix(l, instr+" ") {
				return strings.TrimSpace(strings.TrimPrefix(l, instr))
			}
		}
		return ""
	}
	entry, _ := json.Marshal([]string{Entrypoint})
	cmd, _ := json.Marshal([]string{DefaultCmd})
	for instr, want := range map[string]string{"USER": User, "ENTRYPOINT": string(entry), "CMD": string(cmd), "WORKDIR": "/", "ENV": "PATH=/"} {
		if got := find(instr); got != want {
			t.Errorf("Dockerfile %s %s, want %s", instr, got, want)
		}
	}
	keys := regexp.MustCompile(`(org\.opencontainers\.image\.[a-z]+)=`).FindAllStringSubmatch(find("LABEL"), -1)
	var got []string
	for _, k := range keys {
		got = append(got, k[1])
	}
	var wantKeys []string
	for k := range spec("").Labels() {
		wantKeys = append(wantKeys, k)
	}
	slices.Sort(got)
	slices.Sort(wantKeys)
	if !slices.Equal(got, wantKeys) {
		t.Errorf("Dockerfile labels %v, builder labels %v", got, wantKeys)
	}
	if !strings.Contains(text, "COPY hack/image/rootfs/etc/ /out/etc/") || !strings.Contains(text, "chmod 1777 /out/tmp") {
		t.Errorf("the Dockerfile does not copy hack/image/rootfs and make /tmp as the builder does")
	}
}

// TestDefaultImageIsWhatMakeImageBuilds: the chart's and kustomize's
// default image is the reference make image tags, and its tag is the
// chart's appVersion.
func TestDefaultImageIsWhatMakeImageBuilds(t *testing.T) {
	read := func(p string) string {
		raw, err := os.ReadFile(filepath.Join(root, p))
		if err != nil {
			t.Fatal(err)
		}
		return string(raw)
	}
	match := func(text, expr string) string {
		m := regexp.MustCompile(expr).FindStringSubmatch(text)
		if m == nil {
			t.Fatalf("no match for %s", expr)
		}
		return m[1]
	}
	makeImage := match(read("Makefile"), `(?m)^IMAGE \?= (\S+)$`)
	appVersion := match(read("charts/datapilot/Chart.yaml"), `(?m)^appVersion: "?([^"\s]+)"?$`)
	values := read("charts/datapilot/values.yaml")
	if repo := match(values, `(?m)^  repository: (\S+)$`); repo != makeImage {
		t.Errorf("chart image.repository %s, make image builds %s", repo, makeImage)
	}
	if tag := match(values, `(?m)^  tag: (\S*)$`); tag != `""` {
		t.Errorf("chart image.tag %s: leave it empty so the tag is the appVersion", tag)
	}
	kust := read("config/manager/kustomization.yaml")
	if n := match(kust, `newName: (\S+)`); n != makeImage {
		t.Errorf("kustomize newName %s, make image builds %s", n, makeImage)
	}
	if tag := match(kust, `newTag: "?([^"\s]+)"?`); tag != appVersion {
		t.Errorf("kustomize newTag %s, chart appVersion %s", tag, appVersion)
	}
}
