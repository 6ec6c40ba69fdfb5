package flinksim

import (
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/datapilot/datapilot/internal/flink"
)

// TestJarsLiveInTheReceivingJobManager: an uploaded jar is a file in the
// jar directory of the JobManager that received it (JarUploadHandler).
// With several JobManagers behind one Service, an upload and a run can
// land on different ones; a shared web.upload.dir makes that work.
func TestJarsLiveInTheReceivingJobManager(t *testing.T) {
	ha := map[string]string{
		"high-availability.type": "kubernetes", "kubernetes.cluster-id": "demo",
		"high-availability.storageDir": "s3://bucket/ha",
	}
	for _, tc := range []struct {
		name     string
		settings map[string]string
		mounts   []Mount
		wantRun  bool
	}{
		{"each JobManager its own tmp dir", ha, nil, false},
		{"web.upload.dir on a shared claim", merge(ha, map[string]string{"web.upload.dir": "/flink-shared/jars"}), []Mount{{Path: "/flink-shared", Claim: "state"}}, true},
		{"web.upload.dir on each pod's disk", merge(ha, map[string]string{"web.upload.dir": "/flink-data/jars"}), []Mount{{Path: "/flink-data"}}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e, clk := newTestEngine(t)
			c := simple(tms(1), tc.settings)
			c.Mounts = tc.mounts
			o := withStandby(c.Observation())
			e.Observe(key, o)
			// Round-robin: the upload reaches one JobManager, the run the
			// other.
			jar := upload(t, e)
			_, err := e.RunJar(key, jar, flink.JarRunRequest{})
			if tc.wantRun {
				if err != nil {
					t.Fatal(err)
				}
			} else {
				wantErr(t, err, http.StatusBadRequest, "Jar file ")
				if !strings.Contains(err.Error(), "/flink-web-upload/"+jar+" does not exist") {
					t.Errorf("err = %v", err)
				}
			}
			// Either JobManager answers for the leader's jobs.
			a, _ := e.Jobs(key)
			b, _ := e.Jobs(key)
			if a == nil || b == nil || len(a.Jobs) != len(b.Jobs) {
				t.Errorf("jobs differ between JobManagers: %+v, %+v", a, b)
			}
			clk.step(time.Second)
		})
	}
}

func TestDeleteJar(t *testing.T) {
	e, _ := newTestEngine(t)
	e.Observe(key, simple(tms(1), nil).Observation())
	jar := upload(t, e)
	if err := e.DeleteJar(key, jar); err != nil {
		t.Fatal(err)
	}
	err := e.DeleteJar(key, jar)
	wantErr(t, err, http.StatusBadRequest, "File "+jar+" does not exist in /tmp/flink-web-")
	_, err = e.RunJar(key, jar, flink.JarRunRequest{})
	wantErr(t, err, http.StatusBadRequest, "does not exist")
	_, err = e.UploadJar(key, "notes.txt")
	wantErr(t, err, http.StatusBadRequest, "Only Jar files are allowed.")
}

// Jars do not survive their JobManager process unless web.upload.dir is
// on storage that does.
func TestJarsDieWithTheJobManager(t *testing.T) {
	e, _ := newTestEngine(t)
	e.Observe(key, simple(tms(1), nil).Observation())
	jar := upload(t, e)
	_ = e.LoseJobManager(key)
	_, err := e.RunJar(key, jar, flink.JarRunRequest{})
	wantErr(t, err, http.StatusBadRequest, "does not exist")
}
