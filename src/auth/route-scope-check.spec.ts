import { Controller, Get, Post } from '@nestjs/common';
import { DiscoveryModule, DiscoveryService, MetadataScanner } from '@nestjs/core';
import { Test } from '@nestjs/testing';
import { scopeSetOf } from './oauth/scopes';
import { Public } from './public.decorator';
import { RequiredScope } from './required-scope';
import { discoverRouteAccess, RouteScopeCheck, routeScopeProblems, type RouteAccess } from './route-scope-check';

@Controller('things')
@RequiredScope('workspaces')
class ScopedController {
  @Get()
  list(): void {}

  @Post()
  @RequiredScope('databases')
  create(): void {}

  helper(): void {}
}

@Controller('open')
@Public()
class PublicController {
  @Get()
  read(): void {}
}

@Controller('mixed')
class MixedController {
  @Get('public')
  @Public()
  open(): void {}

  @Get('forgotten')
  forgotten(): void {}

  @Get('both')
  @Public()
  @RequiredScope('query')
  both(): void {}
}

async function routesOf(...controllers: (new () => object)[]): Promise<RouteAccess[]> {
  const app = await Test.createTestingModule({ imports: [DiscoveryModule], controllers }).compile();
  try {
    return discoverRouteAccess(app.get(DiscoveryService), app.get(MetadataScanner));
  } finally {
    await app.close();
  }
}

describe('route scope check (every route needing a token declares its scope; the app refuses to start otherwise)', () => {
  it('reads each route handler as the guard does: the handler’s scope, else its controller’s', async () => {
    expect(await routesOf(ScopedController, PublicController, MixedController)).toEqual([
      { where: 'ScopedController.list', isPublic: false, scopes: scopeSetOf('workspaces') },
      { where: 'ScopedController.create', isPublic: false, scopes: scopeSetOf('databases') },
      { where: 'PublicController.read', isPublic: true, scopes: undefined },
      { where: 'MixedController.open', isPublic: true, scopes: undefined },
      { where: 'MixedController.forgotten', isPublic: false, scopes: undefined },
      { where: 'MixedController.both', isPublic: true, scopes: scopeSetOf('query') },
    ]);
  });

  it('finds nothing wrong with scoped and public routes', async () => {
    expect(routeScopeProblems(await routesOf(ScopedController, PublicController))).toEqual([]);
  });

  it('names a route without a scope, and a public route with one', async () => {
    expect(routeScopeProblems(await routesOf(MixedController))).toEqual([
      'MixedController.forgotten needs a token but declares no @RequiredScope (or is it @Public()?)',
      "MixedController.both is @Public(), so its @RequiredScope('query') is never checked",
    ]);
  });

  it('stops the application from being built', async () => {
    const building = Test.createTestingModule({
      imports: [DiscoveryModule],
      controllers: [ScopedController, MixedController],
      providers: [RouteScopeCheck],
    }).compile();
    await expect(building).rejects.toThrow('Every route needs @Public() or a @RequiredScope');
    await expect(building).rejects.toThrow('MixedController.forgotten needs a token but declares no @RequiredScope');
  });

  it('lets an application whose routes all say who may call them be built', async () => {
    const app = await Test.createTestingModule({
      imports: [DiscoveryModule],
      controllers: [ScopedController, PublicController],
      providers: [RouteScopeCheck],
    }).compile();
    expect(app.get(RouteScopeCheck)).toBeInstanceOf(RouteScopeCheck);
    await app.close();
  });
});
