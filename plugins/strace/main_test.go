package main

import (
	"testing"

	"github.com/warden-run/warden/core/sdk/conformance"
)

func TestConformance(t *testing.T) {
	conformance.Run(t, conformance.Build(t, "."), conformance.Options{})
}
