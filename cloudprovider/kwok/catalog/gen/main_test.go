package main

import (
	"bytes"
	"os"
	"testing"
)

// TestCatalogIsGenerated fails when catalog.json was edited by hand or the generator changed
// without `go generate ./cloudprovider/kwok/catalog`.
func TestCatalogIsGenerated(t *testing.T) {
	want, err := Encode(Generate())
	if err != nil {
		t.Fatal(err)
	}
	got, err := os.ReadFile("../catalog.json")
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, want) {
		t.Error("catalog.json is stale: run go generate ./cloudprovider/kwok/catalog")
	}
}

func TestSpotFactorRange(t *testing.T) {
	for _, it := range Generate().InstanceTypes {
		for _, zone := range Zones {
			if f := spotFactor(it.Name, zone); f < 0.30 || f > 0.40 {
				t.Errorf("spotFactor(%s, %s) = %v, outside [0.30, 0.40]", it.Name, zone, f)
			}
		}
	}
}
