// Package pricing keeps the hourly prices of EC2 instance types in one region: on-demand prices
// from the AWS Pricing API (GetProducts, AmazonEC2 Linux shared-tenancy SKUs) over a built-in
// fallback table, and spot prices from DescribeSpotPriceHistory (the latest price per type and
// zone). Refresh reloads both; Run refreshes periodically. Lookups never call AWS, so a failing or
// throttled API leaves the last good prices (or the fallback table) in place.
package pricing

//go:generate go run ./gen -out zz_generated_fallback.go
