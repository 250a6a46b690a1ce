# One image for every Encore process; the compose file picks the subcommand.
FROM golang:1.26 AS build
WORKDIR /src
COPY go.mod go.sum ./
RUN go mod download
COPY . .
RUN CGO_ENABLED=1 go build -o /out/encore ./cmd/encore

FROM debian:bookworm-slim
RUN apt-get update && apt-get install -y --no-install-recommends ca-certificates && rm -rf /var/lib/apt/lists/*
# Not root: a compromised process cannot change the image or the host's
# mounts it sees. A numeric uid lets the platform verify this without reading
# /etc/passwd (Kubernetes runAsNonRoot).
RUN useradd --system --uid 10001 --user-group --home-dir /var/lib/encore --create-home --shell /usr/sbin/nologin encore
COPY --from=build /out/encore /usr/local/bin/encore
WORKDIR /var/lib/encore
USER 10001:10001
ENTRYPOINT ["encore"]
