package controller

import (
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/datapilot/datapilot/internal/resources"
)

// action is what the diff decided for one child.
type action string

const (
	actionNone   action = ""
	actionCreate action = "create"
	// actionUpdate: the spec changed since the last apply.
	actionUpdate action = "update"
	// actionRepair: someone else changed a field the operator owns.
	actionRepair action = "repair"
	// actionReplace: the child changes by being deleted, its successor
	// created once it is gone (child.replace).
	actionReplace action = "replace"
)

// decide compares a cached child with the desired one. The spec hash on the
// child says what the operator last applied, so an unchanged cluster costs
// no write; drift catches the fields others are known to change behind the
// operator's back (kubectl scale on the StatefulSet, say).
func decide(exists bool, desiredHash string, cached client.Object, drifted func(client.Object) bool) action {
	switch {
	case !exists:
		return actionCreate
	case cached.GetAnnotations()[resources.AnnotationSpecHash] != desiredHash:
		return actionUpdate
	case drifted != nil && drifted(cached):
		return actionRepair
	}
	return actionNone
}
