package providers

import (
	"context"
	"strings"
	"testing"

	"github.com/joinery-dev/joinery/cloudprovider/aws"
)

func TestChoose(t *testing.T) {
	b := Builders[string]{
		Kwok: func() (string, error) { return "kwok built", nil },
		AWS:  func() (string, error) { return "aws built", nil },
	}
	tests := []struct {
		name, want, wantErr string
	}{
		{name: "kwok", want: "kwok built"},
		{name: "aws", want: "aws built"},
		{name: "gce", wantErr: `unknown --cloud-provider "gce" (known: kwok, aws)`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := Choose(tt.name, b)
			if tt.wantErr != "" {
				if err == nil || err.Error() != tt.wantErr {
					t.Fatalf("Choose() error = %v, want %q", err, tt.wantErr)
				}
				return
			}
			if err != nil || got != tt.want {
				t.Errorf("Choose() = %q, %v, want %q", got, err, tt.want)
			}
		})
	}
}

func TestCatalogKwok(t *testing.T) {
	newCatalog, err := Catalog(context.Background(), "kwok", aws.Settings{}, true)
	if err != nil {
		t.Fatal(err)
	}
	its, err := func() (int, error) {
		src, err := newCatalog(nil, nil)
		if err != nil {
			return 0, err
		}
		list, err := src.GetInstanceTypes(context.Background(), nil)
		return len(list), err
	}()
	if err != nil || its == 0 {
		t.Fatalf("kwok catalog lists %d types, %v", its, err)
	}
	if _, err := Catalog(context.Background(), "gce", aws.Settings{}, false); err == nil || !strings.Contains(err.Error(), "unknown --cloud-provider") {
		t.Errorf("Catalog(gce) error = %v", err)
	}
}
