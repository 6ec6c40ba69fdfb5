// Command image builds Datapilot's operator image without Docker, with
// go-containerregistry: a static bin/datapilot for the target platform on
// an empty base, non-root, no shell, OCI labels (make image runs it). It
// writes a docker-archive tarball and an OCI layout, and with --push sends
// the image to a registry with the credentials of ~/.docker/config.json.
package main

import (
	"flag"
	"fmt"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/google/go-containerregistry/pkg/authn"
	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/remote"
)

func main() {
	var s Spec
	var platform, tag, archive, ociDir, push, created string
	flag.StringVar(&s.Binary, "binary", "", "The static datapilot binary to put in the image.")
	flag.StringVar(&s.Rootfs, "rootfs", "hack/image/rootfs", "Directory with etc/passwd and etc/group.")
	flag.StringVar(&platform, "platform", "linux/amd64", "The binary's platform, os/arch[/variant].")
	flag.StringVar(&s.Version, "version", "", "Version label (the chart's appVersion).")
	flag.StringVar(&s.Revision, "revision", "", "Revision label (the git commit).")
	flag.StringVar(&s.Source, "source", "https://github.com/datapilot/datapilot", "Source label.")
	flag.StringVar(&created, "created", "0", "Creation time as Unix seconds (the commit's time, for a reproducible digest).")
	flag.StringVar(&tag, "tag", "", "Image reference the archive is tagged with, such as ghcr.io/datapilot/datapilot:0.1.0.")
	flag.StringVar(&archive, "archive", "", "Write a docker-archive tarball here.")
	flag.StringVar(&ociDir, "oci", "", "Write an OCI image layout into this directory.")
	flag.StringVar(&push, "push", "", "Push the image to this reference.")
	flag.Parse()
	if err := run(s, platform, tag, archive, ociDir, push, created); err != nil {
		fmt.Fprintln(os.Stderr, "image:", err)
		os.Exit(1)
	}
}

func run(s Spec, platform, tag, archive, ociDir, push, created string) error {
	if s.Binary == "" || s.Version == "" || tag == "" {
		return fmt.Errorf("--binary, --version and --tag are required")
	}
	p, err := v1.ParsePlatform(platform)
	if err != nil {
		return err
	}
	s.Platform = *p
	secs, err := strconv.ParseInt(strings.TrimSpace(created), 10, 64)
	if err != nil {
		return fmt.Errorf("--created %q: %w", created, err)
	}
	s.Created = time.Unix(secs, 0).UTC()
	ref, err := name.NewTag(tag)
	if err != nil {
		return err
	}
	img, err := Build(s)
	if err != nil {
		return err
	}
	digest, err := img.Digest()
	if err != nil {
		return err
	}
	if archive != "" {
		if err := WriteArchive(archive, ref, img); err != nil {
			return err
		}
		fmt.Printf("Wrote %s (%s, %s) to %s\n", ref, digest, platform, archive)
	}
	if ociDir != "" {
		if err := WriteLayout(ociDir, ref, img); err != nil {
			return err
		}
		fmt.Printf("Wrote the OCI layout of %s to %s\n", ref, ociDir)
	}
	if push != "" {
		to, err := name.NewTag(push)
		if err != nil {
			return err
		}
		if err := remote.Write(to, img, remote.WithAuthFromKeychain(authn.DefaultKeychain)); err != nil {
			return fmt.Errorf("pushing %s: %w", to, err)
		}
		fmt.Printf("Pushed %s@%s\n", to, digest)
	}
	return nil
}
